K `fi`
