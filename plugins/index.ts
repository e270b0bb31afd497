// The product areas this server runs, in order. A third party's plugin is one more entry (see examples/).
import account from "./account/index.ts";

export const plugins = [account];
