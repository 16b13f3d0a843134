#!/bin/sh
# OpenMPI's launch agent (plm_rsh_agent) for the nodes of nodes.sh:
# agent.sh HOST COMMAND... runs the command through a shell on that node,
# as ssh would, with this environment (NODES_ID names the nodes).
host=$1; shift
k=${host#dcnode}
ns=$NODES_ID-$k
exec nsenter --net="/var/run/netns/$ns" unshare --uts --mount \
    sh -c "mount --bind /etc/netns/$ns/hosts /etc/hosts && hostname $host && $*"
