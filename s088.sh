select i in a; do b; done
