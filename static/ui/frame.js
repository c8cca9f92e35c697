// Every signed-in page: sign out, and lock controls for viewers.
import { api, lockForViewers } from "./lib.js";

document.getElementById("sign-out")?.addEventListener("click", async () => {
  try { await api("DELETE", "/v1/auth/session"); } finally { location.assign("/ui/sign-in"); }
});
lockForViewers();
