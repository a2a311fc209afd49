# openssl on files in the working directory. A: a digest, and an encrypt/decrypt round
# trip with a password. B: another file and cipher, an HMAC, a new key pair made in the
# working directory, a signature and its check, and base64.
set -eu
if [ "$1" = A ]; then
    openssl dgst -sha256 -r note.txt
    openssl enc -aes-256-cbc -pbkdf2 -pass pass:demo -in note.txt -out note.enc
    openssl enc -d -aes-256-cbc -pbkdf2 -pass pass:demo -in note.enc
else
    openssl dgst -sha512 -r report.txt
    openssl enc -chacha20 -pbkdf2 -pass pass:demo -in report.txt -out report.enc
    openssl enc -d -chacha20 -pbkdf2 -pass pass:demo -in report.enc | openssl dgst -sha256 -r
    openssl dgst -sha256 -hmac k3y -r report.txt
    openssl genpkey -algorithm ed25519 -out signing.key
    openssl pkey -in signing.key -pubout -out signing.pub
    openssl pkeyutl -sign -rawin -inkey signing.key -in note.txt -out note.sig
    openssl pkeyutl -verify -rawin -pubin -inkey signing.pub -in note.txt -sigfile note.sig
    openssl base64 -in note.txt
fi
