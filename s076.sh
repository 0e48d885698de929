"fi"
