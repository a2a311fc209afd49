# A perl report on web logs. A: status counts of one log from stdin. B: every log found
# under logs/ (File::Find), bytes per section as JSON (JSON::PP) into a new folder.
exec perl stats.pl "$1" < logs/access.log
