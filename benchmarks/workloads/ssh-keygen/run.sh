# ssh-keygen making keys into the scratch directory ($TMPDIR), never ~/.ssh.
# A: an ed25519 key. B: an RSA key, its comment changed with -c, a known_hosts file
# hashed with -H and searched with -F. Both: the public half derived again with -y.
set -eu
d="$TMPDIR/keys"
mkdir -p "$d"
if [ "$1" = A ]; then
    ssh-keygen -q -t ed25519 -N '' -C build@ci -f "$d/id"
else
    ssh-keygen -q -t rsa -b 2048 -N '' -C deploy@ci -f "$d/id"
    ssh-keygen -q -c -C renamed@ci -f "$d/id" >/dev/null
    echo "example.org $(ssh-keygen -y -f "$d/id")" > "$d/known_hosts"
    ssh-keygen -q -H -f "$d/known_hosts" >/dev/null 2>&1
    ssh-keygen -F example.org -f "$d/known_hosts" >/dev/null && echo found
fi
ssh-keygen -y -f "$d/id" | cut -d' ' -f1-2 > "$d/again.pub"
cut -d' ' -f1-2 "$d/id.pub" | cmp - "$d/again.pub" && echo same
ssh-keygen -l -f "$d/id.pub" | awk '{print $1, $NF}'
