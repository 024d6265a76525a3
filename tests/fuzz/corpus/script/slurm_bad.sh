#!/bin/bash
#SBATCH --array=0-9
#SBATCH --time=abc
#SBATCH --dependency=afterany:3
#SBATCH --frobnicate=2
#SBATCH --gres=gpu:3 --ntasks-per-node=2
true
