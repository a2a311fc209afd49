# Checking and signing a release's files. A: sha256sum checks a manifest. B: other
# digests (b2sum, md5sum, sha512sum), a new manifest in a new folder, base64 of it.
set -eu
if [ "$1" = A ]; then
    cd release && sha256sum -c ../SHA256SUMS
else
    mkdir manifests
    (cd release && b2sum -l 128 *.bin) > manifests/B2SUMS
    cut -c1-16 manifests/B2SUMS
    md5sum release/doc.txt | cut -d' ' -f1
    sha512sum release/lib.bin | cut -c1-32
    base64 -w 0 manifests/B2SUMS | wc -c
fi
