cat <<<E
fi
