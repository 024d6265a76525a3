#!/bin/sh
#ALLOT --sweep lr=1e-3,1e-4 --gpus 1
#ALLOT --sweep=bs=32,64 --array %2
#ALLOT --sweep lr=
#ALLOT --sweep
echo {lr} {bs}
