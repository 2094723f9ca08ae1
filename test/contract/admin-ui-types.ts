// The dashboard's view of the admin API (ui/api.ts) checked against what the admin API sends, at
// compile time: every admin view must be assignable to the shape the dashboard reads, so a field the
// server renames, drops or retypes fails `npm run build` here instead of showing blank in a browser.
// (The dashboard is compiled on its own, without Node's types, so it cannot import admin/ itself:
// the admin views' modules reach into xds/ and Node. This file is where the two meet.)
import type { CazView } from '../../admin/caz.js';
import type { ConfigzView } from '../../admin/configz.js';
import type { OverviewzView } from '../../admin/overviewz.js';
import type { ProxyConfigzView } from '../../admin/proxy-configz.js';
import type { NackRecord, PushBucket, PushRecord } from '../../admin/push-history.js';
import type { ServicezView } from '../../admin/servicez.js';
import type { SynczView } from '../../admin/syncz.js';
import type { RegistryStatus } from '../../model/registry.js';
import type { HistoryEntry } from '../../store/history.js';
import type { ProxyConnectionRecord } from '../../store/proxy-history.js';
import type * as Ui from '../../ui/api.js';

/** Compiles only when `Server` is assignable to `Dashboard`. */
type Fits<Server extends Dashboard, Dashboard> = [Server, Dashboard];

export type AdminViewsFitTheDashboard = [
  Fits<SynczView, Ui.Syncz>,
  Fits<OverviewzView, Ui.Overviewz>,
  Fits<RegistryStatus, Ui.RegistryStatus>,
  Fits<PushRecord, Ui.PushRecord>,
  Fits<PushBucket, Ui.PushBucket>,
  Fits<NackRecord, Ui.NackRecord>,
  Fits<ServicezView, Ui.Servicez>,
  Fits<ConfigzView, Ui.Configz>,
  Fits<CazView, Ui.Caz>,
  Fits<ProxyConfigzView, Ui.ProxyConfigz>,
  Fits<{ changes: readonly HistoryEntry[]; proxies: readonly ProxyConnectionRecord[] }, Ui.Historyz>,
];
