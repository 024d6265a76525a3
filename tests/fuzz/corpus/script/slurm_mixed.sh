#!/bin/bash
#SBATCH -J mix -p research -n 4 -c 2 --mem-per-cpu=2G
#SBATCH --gpus=8 --time=90
#SBATCH --dependency=afterok:12
#ALLOT --class build --time 2h
srun python train.py
