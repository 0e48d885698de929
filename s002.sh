# c
K V
K = V # c

  # c
