# gettext's tools on a translation. A: msgfmt checks the French catalogue and prints its
# statistics. B: the strings extracted (xgettext) into a new template folder, merged into
# the catalogue (msgmerge), compiled into a new locale tree and decompiled (msgunfmt).
set -eu
if [ "$1" = A ]; then
    msgfmt --check --statistics -o /dev/null po/fr.po 2>&1
else
    mkdir -p pot locale/fr/LC_MESSAGES
    xgettext -L Shell --omit-header -o pot/hello.pot hello.sh
    grep -c msgid pot/hello.pot
    msgmerge -q -o merged.po po/fr.po pot/hello.pot
    msgfmt -o locale/fr/LC_MESSAGES/hello.mo merged.po
    msgunfmt locale/fr/LC_MESSAGES/hello.mo | grep msgstr | sort
fi
