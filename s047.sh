K (a)
