a |

b
