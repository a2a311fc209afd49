# sqlite3 on a database file in the working directory.
# A: create and fill a table, count. B: the same database, then an index, a second
# table, a join, an update, a transaction, a WAL-mode vacuum and a CSV export.
set -eu
sqlite3 shop.db < schema.sql
sqlite3 shop.db 'SELECT count(*), sum(qty) FROM item;'
if [ "$1" = B ]; then
    sqlite3 shop.db < report.sql
    sqlite3 shop.db 'PRAGMA journal_mode=WAL;' 'BEGIN; DELETE FROM item WHERE qty = 0; COMMIT;' 'VACUUM;'
    sqlite3 -csv shop.db 'SELECT name, qty FROM item ORDER BY qty DESC, id LIMIT 3;'
fi
sqlite3 shop.db .dump | wc -l
