#!/bin/sh
#ALLOT --name cafÃ© --env K=ÿþ
#ALLOT --gpu-model Ã
