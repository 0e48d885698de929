K $(fi)
