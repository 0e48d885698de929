a |
