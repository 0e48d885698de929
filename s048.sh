K a)
