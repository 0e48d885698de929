while a; do b
