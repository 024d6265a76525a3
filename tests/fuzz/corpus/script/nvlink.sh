#!/bin/sh
#ALLOT --nvlink required
#ALLOT --topology required --tasks 2 --gpus 4
#ALLOT --nvlink maybe
train.sh
