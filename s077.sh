A=1 fi
