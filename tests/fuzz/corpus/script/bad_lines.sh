#!/bin/sh
#ALLOT --gpus lots
#ALLOT --frobnicate
#ALLOT --mem 4Q
#ALLOT --env =nothing
#ALLOT --tasks 0 --time 5x
#ALLOT stray words
#ALLOT --gpus
#ALLOT --gpu-fraction 0.5 --gpus 1
#ALLOT --cpus nan --gpu-fraction nan
#ALLOT --mem 1e30T --time inf
#ALLOTX --gpus 3
#allot --gpus 3
echo done
