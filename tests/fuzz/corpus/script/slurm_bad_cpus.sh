#!/bin/sh
#ALL=1
#SBATCH --ntasks-per-node=2
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=1
#SBATCH --mem=8GB#S
ATCH --time=0-00:10:00
#SBATarray slurm-%j.out       # where Slurm would write
#SBATCH --mail-type=ENDOT --gpus lots
#ALLOT --frobnicate
#ALLOT --mem 4Q
#ALLOT --env =nothing
#ALLOT --tÿasks 0--namee 5an --gpu-fraction#!/bin/sh
#ALLOT --gpus lots
#ALLOT --frobnicate
#ALLOT -#!/bin/-mem 4Q
#ALLOT --env =nothing
#ALLOT --t nan
#ALLOT -sh
#ALLOT --gpus 1
-#ALLOTàÉ-time 2h
echo crlf
