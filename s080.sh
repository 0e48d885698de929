if a; fi
