#!/bin/sh
#ALLOT --gpus 1
#ALLOT --time 2h
echo crlf
