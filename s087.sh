for ((i = 0; i < 2)); do :; done
