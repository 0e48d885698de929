K `id -u`
