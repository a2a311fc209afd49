# The user's database, made before the session (outside the sandbox).
set -eu
sqlite3 data/shop.db <<'SQL'
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL);
INSERT INTO products (name, price) VALUES ('apple', 0.5), ('pear', 0.75), ('plum', 0.2);
CREATE TABLE orders (id INTEGER PRIMARY KEY, product INTEGER, qty INTEGER);
INSERT INTO orders (product, qty) VALUES (1, 3), (3, 12), (1, 1);
SQL
