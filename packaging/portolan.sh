#!/bin/sh
# portolan: runs the Node.js runtime this package carries on the app beside it (docs/install.md).
# Resolves its own path, so it works as /usr/bin/portolan (a symlink) and from an unpacked tarball.
root=$(dirname "$(dirname "$(readlink -f "$0")")")
exec "$root/runtime/node" @NODE_FLAGS@ "$root/app/dist/cli/main.js" "$@"
