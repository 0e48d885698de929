export K=V
