(K a)
