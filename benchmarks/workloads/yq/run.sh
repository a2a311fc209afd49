# jq and yq (Debian's yq: a python wrapper that runs jq) on deployment files.
# A: jq on the JSON file. B: yq on the YAML file, the result written back as YAML into a
# new folder, then read again.
set -eu
if [ "$1" = A ]; then
    jq -r '.name, (.ports | length)' deploy.json
else
    yq -r '.image.repo + ":" + .image.tag' deploy.yaml
    mkdir rendered
    yq -y '.replicas = 5 | .env += [{"name": "REGION", "value": "eu"}]' deploy.yaml > rendered/deploy.yaml
    yq '.env | map(.name) | join(",")' rendered/deploy.yaml
fi
