K
K ${a
