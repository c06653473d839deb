import{a as L,b as P,c as I}from"./chunk-MZHCCO5O.js";import{a as l,c as f,d as S,e as $}from"./chunk-7F5NUVUW.js";import{a as T,b as m}from"./chunk-MX2K4YCZ.js";var E=["run","session","host","tool"];function A(o){return[...new Set(o.keys())].sort((e,s)=>{let n=E.indexOf(e),i=E.indexOf(s);return(n<0?99:n)-(i<0?99:i)||e.localeCompare(s)}).map(e=>`${encodeURIComponent(e)}=${encodeURIComponent(o.get(e)??"")}`).join("&")}function _(o,t){let e=o.startsWith("#")?o.slice(1):o;if(t){if(e!==t&&!e.startsWith(`${t}&`))return new URLSearchParams;e=e.slice(t.length+1)}return new URLSearchParams(e)}function U(o,t){let e=A(t);return o?e?`#${o}&${e}`:`#${o}`:`#${e}`}var x=class{constructor(t,e,s){this.where=t;this.win=e;this.prefix=s}where;win;prefix;read(){return _(this.win.location.hash,this.prefix)}write(t){let e=U(this.prefix,t),s=this.win.location.hash;e!==s&&(this.prefix&&s!==`#${this.prefix}`&&!s.startsWith(`#${this.prefix}&`)||this.win.history.replaceState(this.win.history.state,"",e))}href(t){let e=new URL(this.win.location.href);return e.hash=U(this.prefix,t),e.href}listen(t){return this.win.addEventListener("hashchange",t),()=>this.win.removeEventListener("hashchange",t)}};function H(o,t){try{let e=o.top;if(!e||e===o)return null;let s=e.location.hash;return s===`#${t}`||s.startsWith(`#${t}&`)?e:null}catch{return null}}function O(o=window,t="profscope"){let e=H(o,t);return e?new x("top",e,t):new x("self",o,"")}var W=T({"./compare/index.ts":()=>import("./views/compare.js"),"./overview/index.ts":()=>import("./views/overview.js"),"./roofline/index.ts":()=>import("./views/roofline.js"),"./trace/index.ts":()=>import("./views/trace.js"),"./xla/index.ts":()=>import("./views/xla.js")});var v=m;function w(o){return v.some(t=>t.id===o)}function b(o){let t=v.find(e=>e.id===o);if(!t)throw new Error(`unknown tool "${o}"; the tools are ${v.map(e=>e.id).join(", ")}`);return t}async function j(o){return b(o),await W(`./${o}/index.ts`)}function M(o){let t=[],e=new Map,s=new Map;for(let p of o){let a=p.filter(w);for(let r of a)e.has(r)||(t.push(r),e.set(r,new Set),s.set(r,0));for(let r=1;r<a.length;r++){let[u,h]=[a[r-1],a[r]],d=e.get(u);u!==h&&!d.has(h)&&(d.add(h),s.set(h,s.get(h)+1))}}let n=[],i=new Set(t);for(;i.size;){let p=t.find(a=>i.has(a)&&s.get(a)<=0)??t.find(a=>i.has(a));i.delete(p),n.push(p);for(let a of e.get(p))s.set(a,s.get(a)-1)}return[...n.map(b),...v.filter(p=>!e.has(p.id))]}function V(o){return o.sessions.flatMap(t=>t.hosts.flatMap(e=>e.files))}function B(o){return o.format_label??o.format??"unknown format"}function F(o){return o.label??o.name}function C(o){let t=V(o),e=[...new Set(t.filter(i=>!i.error&&i.format).map(B))],s=t.filter(i=>i.error).length,n=[e.length?`${o.name} — ${e.join(", ")}`:o.name];return o.sessions.length>1&&n.push(`${o.sessions.length} sessions`),s&&n.push(`${s} unreadable file${s>1?"s":""}`),n.join(" · ")}var K=new Set(["run","session","host","tool"]);function N(o){return o.runs.flatMap(t=>t.sessions.flatMap(e=>e.hosts.map(s=>s.tools)))}function R(o){let t=new Set;for(let e of o)for(let s of e.tools)w(s)&&t.add(s);return t}var y=class{constructor(t,e){this.client=t;this.store=e;this.pickers=l("div",{class:"ps-pickers"},l("label",{},l("span",{},"Run"),this.runSelect),l("label",{},l("span",{},"Session"),this.sessionSelect),l("label",{},l("span",{},"Host"),this.hostSelect));let s=l("button",{class:"ps-button",type:"button",title:"Reload the list of runs","data-testid":"reload-runs"},"Reload runs");s.addEventListener("click",()=>{this.loadRuns()}),this.linkButton.addEventListener("click",()=>{this.copyLink()}),this.linkButton.title=e.where==="top"?"The address bar always holds a link to this view; this copies it":"Copy a link that reopens this view",this.el=l("div",{class:"ps-app"},l("header",{class:"ps-bar"},this.pickers,this.tabs,l("span",{class:"ps-spacer"}),this.linkButton,s),this.notices,this.main),this.runSelect.addEventListener("change",()=>this.pick({run:this.runSelect.value})),this.sessionSelect.addEventListener("change",()=>this.pick({session:this.sessionSelect.value})),this.hostSelect.addEventListener("change",()=>this.pick({hosts:this.hostSelect.value.split(",")})),e.listen(()=>this.applyFragment())}client;store;runs=null;tabList=v;sel=null;viewParams=new URLSearchParams;views=new Map;subjectKey="";runsAbort=null;logdirErrors=[];el;runSelect=l("select",{"data-testid":"run-select","aria-label":"Run"});sessionSelect=l("select",{"data-testid":"session-select","aria-label":"Session"});hostSelect=l("select",{"data-testid":"host-select","aria-label":"Host"});tabs=l("nav",{class:"ps-tabs",role:"tablist"});notices=l("div",{class:"ps-notices"});main=l("main",{class:"ps-main"});linkButton=l("button",{class:"ps-button","data-testid":"copy-link",type:"button"},"Copy link");pickers;async loadRuns(){this.runsAbort?.abort();let t=this.runsAbort=new AbortController;this.pickers.hidden=!0,this.setMessage(l("div",{class:"ps-loading","data-testid":"runs-loading"},"Loading runs…"));try{this.runs=await this.client.runs(t.signal)}catch(e){if($(e))return;let s=l("button",{class:"ps-button",type:"button"},"Retry");s.addEventListener("click",()=>{this.loadRuns()}),this.setMessage(l("div",{class:"ps-error",role:"alert","data-testid":"runs-error"},`Could not list runs: ${S(e)} `,s));return}if(this.logdirErrors=this.runs.errors??[],this.tabList=M(N(this.runs)),!this.runs.runs.length){let e=this.runs.empty_message||`No profiles found under ${this.runs.logdir}. Write a profile there (TensorFlow, JAX, PyTorch or PyTorch/XLA) and reload.`;this.renderTabs(),this.renderNotices([],null),this.setMessage(l("div",{class:"ps-empty","data-testid":"empty-logdir"},e));return}this.pickers.hidden=!1,this.applyFragment()}setMessage(t){this.unmountAll(),f(this.main),this.main.append(t)}applyFragment(){if(!this.runs||!this.runs.runs.length)return;let t=this.store.read(),e=new URLSearchParams;for(let[i,p]of t)K.has(i)||e.set(i,p);this.viewParams=e;let s=t.get("host"),n=t.get("tool");this.select({run:t.get("run")??"",session:t.get("session")??"",hosts:s?s.split(","):[],tool:w(n)?n:null},!0)}pick(t){if(!this.sel)return;let e={...this.sel,...t};t.run&&(e.session=""),(t.run||t.session)&&(e.hosts=[]),this.viewParams=new URLSearchParams,this.select(e,!1)}select(t,e){let s=this.runs.runs,n=s.find(c=>c.name===t.run)??s[0],i=n.sessions.find(c=>c.name===t.session)??n.sessions[0],p=new Set(i?i.hosts.map(c=>c.name):[]),a=t.hosts.filter(c=>p.has(c));!a.length&&i?.hosts.length&&(a=[i.hosts[0].name]);let r=i?i.hosts.filter(c=>a.includes(c.name)):[],u=R(r),h=t.tool;(h===null||!u.has(h))&&(h=this.tabList.find(c=>u.has(c.id))?.id??t.tool??this.tabList[0].id);let d=e&&t.run!==""&&(n.name!==t.run||t.session!==""&&i?.name!==t.session);d&&(this.viewParams=new URLSearchParams),this.sel={run:n.name,session:i?i.name:"",hosts:a,tool:h},this.renderPickers(n,i),this.renderTabs(),this.renderNotices(r,d?t:null),this.writeFragment(),this.showTool(r,u)}renderPickers(t,e){let s=this.sel,n=(r,u,h)=>{f(r);for(let d of u)r.append(l("option",{value:d.value},d.text));r.value=h,r.disabled=u.length<2},i=this.runs.runs;n(this.runSelect,i.map(r=>({value:r.name,text:C(r)})),t.name),n(this.sessionSelect,t.sessions.map(r=>({value:r.name,text:F(r)})),s.session);let p=e?e.hosts:[],a=p.map(r=>({value:r.name,text:r.name}));if(p.length>1){let r=p.map(h=>h.name).join(",");a.unshift({value:r,text:`All ${p.length} hosts (merged timeline)`});let u=s.hosts.join(",");s.hosts.length>1&&u!==r&&a.push({value:u,text:`${s.hosts.length} hosts: ${u}`})}n(this.hostSelect,a,s.hosts.join(","))}renderTabs(){f(this.tabs);let t=this.sel,e=t?this.currentSession():void 0,s=e&&t?e.hosts.filter(i=>t.hosts.includes(i.name)):[],n=R(s);for(let i of this.tabList){let p=t?.tool===i.id,a=n.has(i.id),r=l("button",{type:"button",role:"tab",class:`ps-tab${p?" active":""}`,"data-testid":`tab-${i.id}`,"aria-selected":p?"true":"false",disabled:!a,title:a?i.title:`${i.title}: no data for this tool in the selected host`},i.title);r.addEventListener("click",()=>this.switchTool(i.id)),this.tabs.append(r)}}renderNotices(t,e){f(this.notices);for(let s of this.logdirErrors)this.notices.append(l("div",{class:"ps-notice",role:"status"},s));e&&this.notices.append(l("div",{class:"ps-notice"},`The link names run "${e.run}"${e.session?`, session "${e.session}"`:""}, which is not in this logdir; showing the first run instead.`));for(let s of t)for(let n of s.files)n.error&&this.notices.append(l("div",{class:"ps-notice",role:"status"},`${s.name}: ${n.path} could not be read: ${n.error}`))}currentSession(){let t=this.sel;if(!(!t||!this.runs))return this.runs.runs.find(e=>e.name===t.run)?.sessions.find(e=>e.name===t.session)}subject(){let t=this.sel;return{run:t.run,session:t.session,hosts:t.hosts}}writeFragment(){let t=this.sel;if(!t)return;let e=new URLSearchParams({run:t.run,session:t.session,host:t.hosts.join(","),tool:t.tool});for(let[s,n]of this.viewParams)e.set(s,n);this.store.write(e)}currentParams(){let t=this.sel,e=new URLSearchParams({run:t.run,session:t.session,host:t.hosts.join(","),tool:t.tool});for(let[s,n]of this.viewParams)e.set(s,n);return e}async copyLink(){if(!this.sel)return;let t=this.store.href(this.currentParams());try{await navigator.clipboard.writeText(t),this.linkButton.textContent="Link copied"}catch{window.prompt("Link to this view:",t)}setTimeout(()=>{this.linkButton.textContent="Copy link"},1500)}switchTool(t,e){if(!this.sel)return;this.sel={...this.sel,tool:t},e&&(this.viewParams=new URLSearchParams(e)),this.renderTabs(),this.writeFragment();let s=this.currentSession(),n=s?s.hosts.filter(i=>this.sel.hosts.includes(i.name)):[];this.showTool(n,R(n),e!==void 0)}unmountAll(){for(let t of this.views.values())t.abort.abort(),t.instance?.unmount?.(),t.container.remove();this.views.clear(),this.subjectKey=""}showTool(t,e,s=!1){let n=this.sel,i=JSON.stringify(this.subject());i!==this.subjectKey&&(this.unmountAll(),f(this.main),this.subjectKey=i);for(let d of this.views.values())d.container.hidden=d.tool!==n.tool;let p=this.views.get(n.tool);if(p){p.instance?.show?.(),(s||this.viewParams.toString())&&p.instance?.update?.(new URLSearchParams(this.viewParams));return}let a=l("section",{class:"ps-view","data-testid":`view-${n.tool}`,role:"tabpanel"}),r={tool:n.tool,container:a,instance:null,abort:new AbortController};this.views.set(n.tool,r),this.main.append(a);let u=b(n.tool);if(!e.has(n.tool)){a.append(l("div",{class:"ps-empty"},`${u.title}: the selected host has no data for this tool.`));return}a.append(l("div",{class:"ps-loading"},"Loading view…"));let h=this.subject();j(n.tool).then(d=>{r.abort.signal.aborted||(f(a),r.instance=d.mount(a,{client:this.client,subject:h,hosts:t,params:new URLSearchParams(this.viewParams),signal:r.abort.signal,setParams:c=>{if(!r.abort.signal.aborted){for(let[g,k]of Object.entries(c))k===void 0?this.viewParams.delete(g):this.viewParams.set(g,k);this.writeFragment()}},navigate:(c,g)=>this.switchTool(b(c).id,g)}))},d=>{if(r.abort.signal.aborted)return;f(a);let c=d instanceof L?d.message:`could not load the ${n.tool} view (${S(d)})`;a.append(l("div",{class:"ps-error",role:"alert"},c))})}};var z=`/* profscope: shell and trace viewer. Scoped by class prefixes ps- (shell) and tv- (trace view). */
.ps-root {
  margin: 0;
  height: 100vh;
  font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: #1f2937;
  background: #fff;
  overflow: hidden;
}
.ps-root [hidden] { display: none !important; }
.ps-app { display: flex; flex-direction: column; height: 100%; }
.ps-bar {
  display: flex; align-items: center; gap: 12px; flex-wrap: wrap;
  padding: 6px 10px; border-bottom: 1px solid #dde2e8; background: #f8f9fb;
}
.ps-pickers { display: flex; gap: 10px; flex-wrap: wrap; }
.ps-pickers label { display: flex; align-items: center; gap: 4px; }
.ps-pickers label > span { color: #6b7280; font-size: 12px; }
.ps-pickers select { max-width: 280px; font: inherit; padding: 2px 4px; }
.ps-tabs { display: flex; gap: 2px; }
.ps-tab {
  font: inherit; padding: 4px 12px; border: 1px solid transparent; border-radius: 4px;
  background: none; cursor: pointer; color: #374151;
}
.ps-tab:hover:not(:disabled) { background: #eef1f5; }
.ps-tab.active { background: #fff; border-color: #c9d1dc; color: #0b57d0; font-weight: 600; }
.ps-tab:disabled { color: #a0a7b1; cursor: not-allowed; }
.ps-spacer { flex: 1; }
.ps-button {
  font: inherit; padding: 2px 10px; border: 1px solid #c9d1dc; border-radius: 4px;
  background: #fff; cursor: pointer;
}
.ps-button:hover { background: #eef1f5; }
.ps-notices:empty { display: none; }
.ps-notice { padding: 4px 10px; background: #fff8e1; border-bottom: 1px solid #f3e3a6; font-size: 12px; }
.ps-main { flex: 1; min-height: 0; position: relative; }
.ps-view { height: 100%; display: flex; flex-direction: column; }
.ps-view[hidden] { display: none; }
.ps-loading, .ps-empty { padding: 24px; color: #4b5563; }
.ps-empty { white-space: pre-wrap; }
.ps-error { padding: 12px 16px; color: #a50e0e; background: #fce8e6; border-radius: 4px; margin: 8px; }
kbd {
  font: 11px ui-monospace, monospace; padding: 0 4px; border: 1px solid #c9d1dc;
  border-bottom-width: 2px; border-radius: 3px; background: #fff;
}

.tv { display: flex; flex-direction: column; height: 100%; position: relative; outline: none; }
.tv-toolbar {
  display: flex; align-items: center; gap: 10px; padding: 4px 8px; border-bottom: 1px solid #e5e7eb;
  flex-wrap: wrap;
}
.tv-tools { display: flex; gap: 2px; }
.tv-tool {
  font: inherit; padding: 2px 8px; border: 1px solid #c9d1dc; background: #fff; cursor: pointer;
}
.tv-tool:first-child { border-radius: 4px 0 0 4px; }
.tv-tool:last-child { border-radius: 0 4px 4px 0; }
.tv-tool.active { background: #e8f0fe; border-color: #1a73e8; color: #0b57d0; }
.tv-toggle { display: flex; align-items: center; gap: 2px; cursor: pointer; }
.tv-searchbox { display: flex; align-items: center; gap: 4px; }
.tv-search { font: inherit; width: 220px; padding: 2px 6px; }
.tv-search-count { color: #4b5563; font-size: 12px; min-width: 40px; }
.tv-status { color: #6b7280; font-size: 12px; white-space: nowrap; }
.tv-notices:empty { display: none; }
.tv-notices details summary { cursor: pointer; }
.tv-body { flex: 1; min-height: 120px; display: flex; flex-direction: column; position: relative; }
.tv-axis { display: block; flex: none; width: 100%; height: 30px; }
.tv-scroll { flex: 1; overflow-y: auto; overflow-x: hidden; position: relative; min-height: 0; }
.tv-canvas { display: block; position: sticky; top: 0; cursor: default; touch-action: none; }
.tv-canvas.over-event { cursor: pointer; }
.tv-canvas.over-header { cursor: pointer; }
.tv-canvas[data-tool="pan"] { cursor: grab; }
.tv-canvas[data-tool="zoom"] { cursor: zoom-in; }
.tv-canvas[data-tool="timing"] { cursor: col-resize; }
.tv-canvas.grabbing { cursor: grabbing; }
.tv-overlay {
  position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;
  background: rgba(255, 255, 255, 0.92);
}
.tv-splitter { height: 5px; cursor: row-resize; background: #e5e7eb; flex: none; }
.tv-details { height: min(230px, 32vh); overflow: auto; padding: 6px 12px; flex: none; font-size: 12px; }
.tv-details h3 { margin: 4px 0; font-size: 13px; }
.tv-details h4 { margin: 8px 0 2px; font-size: 12px; }
.tv-details-grid { display: grid; grid-template-columns: minmax(280px, 1fr) 2fr; gap: 16px; }
.tv-kv { border-collapse: collapse; }
.tv-kv th { text-align: left; color: #6b7280; font-weight: normal; padding: 1px 12px 1px 0; vertical-align: top; white-space: nowrap; }
.tv-kv td { padding: 1px 0; word-break: break-word; }
.tv-pre { margin: 0; white-space: pre-wrap; font: 11px ui-monospace, monospace; max-height: 160px; overflow: auto; }
.tv-flows ul { margin: 0; padding-left: 16px; }
.tv-summary { border-collapse: collapse; width: 100%; }
.tv-summary th { text-align: left; border-bottom: 1px solid #d1d5db; padding: 2px 8px; cursor: pointer; user-select: none; white-space: nowrap; }
.tv-summary td { padding: 1px 8px; border-bottom: 1px solid #f0f1f3; }
.tv-summary .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.tv-hint { color: #6b7280; margin: 4px 0; }
.tv-tooltip {
  position: absolute; z-index: 5; pointer-events: none; background: #fff; border: 1px solid #c9d1dc;
  border-radius: 4px; padding: 4px 8px; box-shadow: 0 2px 6px rgba(0, 0, 0, 0.15); max-width: 320px;
  font-size: 12px; word-break: break-all;
}
.tv-help {
  position: absolute; inset: 0; z-index: 10; background: rgba(0, 0, 0, 0.35);
  display: flex; align-items: center; justify-content: center;
}
.tv-help[hidden] { display: none; }
.tv-help-box { background: #fff; border-radius: 8px; padding: 16px 24px; max-height: 90%; overflow: auto; }
.tv-help-box h2 { margin: 0 0 8px; font-size: 16px; }
.tv-help-keys th { text-align: left; padding: 2px 16px 2px 0; white-space: nowrap; }
`;function ut(o={}){let t=document.createElement("style");t.textContent=z,document.head.append(t);let e=o.root??document.body;e.classList.add("ps-root");let s=new I(o.base??P(import.meta.url)),n=new y(s,O());return e.append(n.el),n.loadRuns(),n}export{ut as render};
