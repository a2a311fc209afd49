"""cvg message contract."""
