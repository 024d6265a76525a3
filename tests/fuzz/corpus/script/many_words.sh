#!/bin/sh
#ALLOT --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold --hold
#ALLOT --env A0=0 --env A1=1 --env A2=2 --env A3=3 --env A4=4 --env A5=5 --env A6=6 --env A7=7 --env A8=8 --env A9=9 --env A10=10 --env A11=11 --env A12=12 --env A13=13 --env A14=14 --env A15=15 --env A16=16 --env A17=17 --env A18=18 --env A19=19
true
