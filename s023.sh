K a\\
fi
