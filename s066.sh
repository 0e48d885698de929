K
fi
