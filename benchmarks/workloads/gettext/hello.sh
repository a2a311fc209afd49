echo "$(gettext -d hello 'Hello, world')"
echo "$(gettext -d hello 'Goodbye')"
