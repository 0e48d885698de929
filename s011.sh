K V
K "a
K V
