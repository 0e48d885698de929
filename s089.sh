case $x in a|b) c;; (d) e;& *) ;;& esac
