#!/bin/sh
	#ALLOT	--gpu-fraction=0.25	--hold
#ALLOT --after 17 --time 90m
#ALLOT --class inference
python -m server
#ALLOT --gpus 2
