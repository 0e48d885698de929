K "$(echo ")")"
