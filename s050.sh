K a 2>/dev/null >&2 <f <<<w
