#!/bin/bash
#ALLOT --gpus 8 --tasks 4
#ALLOT --queue research --class train
#ALLOT --mem 512G --cpus 64 --time 1d
#ALLOT --env NCCL_DEBUG=INFO --env=OMP_NUM_THREADS=8
#ALLOT --name llama-ft --gpu-model H100-80GB

# Everything below runs on every task.
exec torchrun --nproc_per_node=8 train.py "$@"
