#!/bin/bash
#SBATCH --job-name=resnet
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=1
#SBATCH --mem=8G
#SBATCH --time=0-00:10:00
#SBATCH -o slurm-%j.out       # where Slurm would write
#SBATCH --mail-type=END
echo "rank=$SLURM_PROCID of $SLURM_NTASKS local=$SLURM_LOCALID job=$SLURM_JOB_ID gpus=$CUDA_VISIBLE_DEVICES"
