K "it's"
