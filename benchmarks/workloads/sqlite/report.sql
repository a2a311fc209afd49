CREATE INDEX item_qty ON item (qty);
CREATE TABLE orders (id INTEGER PRIMARY KEY, item INTEGER REFERENCES item, n INTEGER);
INSERT INTO orders (item, n) SELECT id, qty * 2 FROM item WHERE qty > 10;
UPDATE item SET qty = qty + 1 WHERE id IN (SELECT item FROM orders);
SELECT i.qty, count(*), sum(o.n) FROM item i JOIN orders o ON o.item = i.id GROUP BY i.qty ORDER BY 1;
