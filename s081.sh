while a; do b; done
