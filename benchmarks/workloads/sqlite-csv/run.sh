# inputs: A B C D
# sqlite3 on CSV files and databases. A: a CSV imported and queried. B: two CSVs joined,
# the database dumped and backed up into a new folder. C: JSON output and a JSON
# function, the result exported as CSV. D: last year's database from archive/ attached
# and compared.
set -eu
case "$1" in
A) sqlite3 -csv :memory: '.import staff.csv staff' 'SELECT team, COUNT(*) FROM staff GROUP BY team ORDER BY team;' ;;
B) sqlite3 work.db '.mode csv' '.import staff.csv staff' '.import teams.csv teams' \
       'SELECT s.name, t.floor FROM staff s JOIN teams t USING (team) ORDER BY s.name;'
   mkdir backups
   sqlite3 work.db ".backup backups/work.db"
   sqlite3 backups/work.db .dump | grep -c INSERT ;;
C) sqlite3 -json :memory: '.import --csv staff.csv staff' \
       "SELECT json_group_array(name) AS names FROM staff WHERE salary > 85;"
   sqlite3 -header -csv :memory: '.import --csv staff.csv staff' '.once high.csv' \
       'SELECT name FROM staff WHERE salary > 85 ORDER BY name;'
   cat high.csv ;;
D) sqlite3 now.db '.import --csv staff.csv staff' \
       "ATTACH 'archive/2025.db' AS old;" \
       'SELECT n.name, n.salary - o.salary FROM staff n JOIN old.staff o USING (id) ORDER BY n.id;' ;;
esac
