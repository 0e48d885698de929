| a
