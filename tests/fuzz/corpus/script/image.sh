#!/bin/sh
#ALLOT --image localhost/train:1
#SBATCH --container-image=docker://nvcr.io#nvidia/pytorch:24.01-py3
echo hi
