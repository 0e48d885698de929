K V
K2 "V"
