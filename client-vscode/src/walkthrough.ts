/**
 * Opening the extension's walkthrough (no `vscode` here: tested in plain Node).
 *
 * VS Code's `workbench.action.openWalkthrough` does nothing when a Welcome editor that already
 * shows a walkthrough is the active editor of any group: on a default first run the Welcome
 * page opens on VS Code's own "Setup" walkthrough, so the command would leave it as it is. The
 * Welcome editors are closed first (they are views, never unsaved work), then the command opens
 * ours where the Welcome page was.
 */

/** What a tab shows, as `vscode.Tab` gives it: `input` is undefined for an editor the API has
 *  no type for (the Welcome page is one). */
export interface TabLike {
  label: string;
  input: unknown;
}

/** The Welcome page's tab titles: "Welcome" and "Walkthrough: <title>" (VS Code's English). */
export function isWelcomeTab(tab: TabLike): boolean {
  return tab.input === undefined && (tab.label === 'Welcome' || tab.label.startsWith('Walkthrough: '));
}

/** The tabs to close before the walkthrough is opened. */
export function welcomeTabs<T extends TabLike>(tabs: readonly T[]): T[] {
  return tabs.filter(isWelcomeTab);
}
